; A CUDA kernel that writes out[i] = 3 * i + 1 for i < n, compiled to PTX by
; llc at build time and loaded through the CUDA driver API at run time.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define void @fill(ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %width = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %block, %width
  %i = add i32 %base, %tid
  %in_range = icmp slt i32 %i, %n
  br i1 %in_range, label %body, label %done

body:
  %tripled = mul i32 %i, 3
  %value = add i32 %tripled, 1
  %index = sext i32 %i to i64
  %slot = getelementptr i32, ptr addrspace(1) %out, i64 %index
  store i32 %value, ptr addrspace(1) %slot
  br label %done

done:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{ptr @fill, !"kernel", i32 1}
